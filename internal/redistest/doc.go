// Package redistest starts real redis-server processes on loopback ports for the integration and cluster test tiers.
//
// Every process binds 127.0.0.1 only, runs without persistence and is killed
// (and waited for) when the owning test ends. [Start] and [StartCluster]
// give a test its own instance; [SharedServer] and [SharedCluster] hand out
// one lazily started instance per test binary, which [Main] stops after all
// tests ran. Tests that use the shared instances must call [Main] from
// TestMain and must flush (or namespace their keys, see [UniqueName])
// themselves.
//
// When redis-server is missing the helpers skip the calling test, unless the
// environment variable REDISYNC_REQUIRE_REDIS=1 is set, in which case they
// fail it (for CI jobs that must not silently skip a tier).
package redistest
