package script

import "strings"

// Outcomes of the force-unlock scripts.
const (
	ForceMoved   = -1 // the holds were not the ones aimed at: nothing changed
	ForceNone    = 0  // there was no lock
	ForceDeleted = 1  // the lock was deleted
)

// Aim returns the hold fields of a lock hash (all but "mode" and "@"
// fields), which a force-unlock script must find exactly to delete the
// lock. Hold ids are never reused, so a late copy cannot delete a later
// hold.
func Aim(fields map[string]string) []any {
	var aim []any
	for f := range fields {
		if f != "mode" && !strings.HasPrefix(f, "@") {
			aim = append(aim, f)
		}
	}
	return aim
}

// OwnerOf returns the owner id of hold id, which names its place in line
// and its channel.
func OwnerOf(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}
