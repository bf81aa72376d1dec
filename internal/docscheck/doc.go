// Package docscheck holds tests of the repository's Markdown: that the
// README stays a front door, that its figures are docs/benchmarks.md's,
// that its example is a package example that go test runs, that its test
// command is the one .ci/run runs, and that docs/testing.md's map from
// the guarantees to their tests names tests that exist. It has no code of
// its own and imports nothing of the library.
package docscheck
