package script

import "strings"

// Outcomes of the force-unlock scripts (ReentrantForceUnlock,
// FairForceUnlock, RWForceUnlock).
const (
	ForceMoved   = -1 // the holds were not the ones aimed at: nothing changed
	ForceNone    = 0  // there was no lock
	ForceDeleted = 1  // the lock was deleted
)

// Aim returns the holds of a lock hash whose fields are fields (an
// HGETALL; empty for a free lock) as a force-unlock script takes them:
// the hash's mode and attempt marks ("@" fields), field and value pairs.
// The script deletes the lock only when it finds exactly these. A hold's
// mark only grows for its owner, so no later hold has the marks of an
// earlier one, and a copy of the script that Redis runs late cannot
// delete a hold taken since.
func Aim(fields map[string]string) []any {
	var aim []any
	for f, v := range fields {
		if f == "mode" || strings.HasPrefix(f, "@") {
			aim = append(aim, f, v)
		}
	}
	return aim
}
