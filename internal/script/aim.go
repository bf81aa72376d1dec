package script

import "strings"

// Outcomes of the force-unlock scripts.
const (
	ForceMoved   = -1 // the holds were not the ones aimed at: nothing changed
	ForceNone    = 0  // there was no lock
	ForceDeleted = 1  // the lock was deleted
)

// Aim returns the hold fields of a lock hash, which a force-unlock must
// find exactly: ids are never reused, so a late copy spares later holds.
func Aim(fields map[string]string) []any {
	var aim []any
	for f := range fields {
		if f != "mode" && !strings.HasPrefix(f, "@") {
			aim = append(aim, f)
		}
	}
	return aim
}

// OwnerOf returns the owner id of hold id.
func OwnerOf(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}
