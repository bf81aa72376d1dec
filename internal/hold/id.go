package hold

// HoldID returns the hold id of the handle's current hold; "" when it
// holds nothing. A lock whose hash has several fields per hold (a
// read-write lock's, one per mode) asks Redis about them by it.
func (l *Lock) HoldID() string {
	if h := l.t.current(); h != nil {
		return h.id
	}
	return ""
}
