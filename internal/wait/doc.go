// Package wait is the one wait loop every blocking acquire goes through
// (Wait and its kinds for a line, a kept place and a grant) and the
// reports of waits and holds to a client's Observer (package observe).
package wait
