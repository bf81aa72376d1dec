// Package errs holds the errors every primitive shares (re-exported by
// the public packages), their wrapping, and the questions asked of an
// error: is the outcome unknown, did ctx end it, is it transient.
package errs
