package internal

import "github.com/google/uuid"

// NewOwnerID returns a random owner id for a handle. It is a uuid: unique
// across processes without coordination.
func NewOwnerID() string { return uuid.NewString() }
