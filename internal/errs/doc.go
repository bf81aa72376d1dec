// Package errs holds the errors every primitive shares and how they are
// read: the sentinel values the public packages re-export (ErrNotHeld,
// ErrLost, ErrWrongType…), the wrapping with package, operation and name,
// and the questions a caller asks of an error: did the request's outcome
// stay unknown (a reply lost), did ctx end it, is it a refusal Redis gives
// for a while (TRYAGAIN, LOADING…) and worth riding out.
package errs
