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
// the fields that name a hold id (all but "mode" and the "@" fields). The
// script deletes the lock only when it finds exactly these. Hold ids are
// never reused, so no later hold has the fields of an earlier one, and a
// copy of the script that Redis runs late cannot delete a hold taken
// since.
func Aim(fields map[string]string) []any {
	var aim []any
	for f := range fields {
		if f != "mode" && !strings.HasPrefix(f, "@") {
			aim = append(aim, f)
		}
	}
	return aim
}

// OwnerOf returns the owner id of hold id: the handle's part, which names
// its place in line and its channel.
func OwnerOf(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}
