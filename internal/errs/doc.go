// Package errs holds the errors every primitive shares and how to read
// them: is the outcome unknown, did ctx end it, is it transient.
package errs
