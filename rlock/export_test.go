package rlock

// Queued returns how many calls wait on m's local line for its hold.
func Queued(m *Mutex) int { return m.l.Queued() }
