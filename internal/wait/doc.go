// Package wait is the wait loop every blocking acquire goes through, and
// the reports of waits and holds to a client's Observer (package observe).
package wait
