// Package redistest starts real server processes on loopback ports for the integration and cluster test tiers.
//
// The server binary is redis-server unless the environment variable
// REDISYNC_SERVER names another (e.g. valkey-server); clusters are created
// with redis-cli unless REDISYNC_CLI names another (e.g. valkey-cli). See
// [ServerBin] and [CLIBin].
//
// Every process binds 127.0.0.1 only, runs without persistence and is killed
// (and waited for) when the owning test ends. [Start], [StartCluster] and
// [StartClusterWithReplicas] give a test its own instance; [SharedServer] and [SharedCluster] hand out
// one lazily started instance per test binary, which [Main] stops after all
// tests ran. Tests that use the shared instances must call [Main] from
// TestMain and must flush (or namespace their keys, see [UniqueName])
// themselves.
//
// When the configured binaries are missing the helpers skip the calling
// test, unless the environment variable REDISYNC_REQUIRE_REDIS=1 is set, in
// which case they fail it (for CI jobs that must not silently skip a tier).
package redistest
