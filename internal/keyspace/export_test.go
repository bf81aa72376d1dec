package keyspace

// OwnerPrefix is ownerPrefix: the start of the owner ids of process pid
// on host.
var OwnerPrefix = ownerPrefix
