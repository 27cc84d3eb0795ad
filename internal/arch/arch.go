// Package arch holds the test that keeps the package graph the way
// docs/architecture.md draws it: each package imports only what its
// line there allows. It has no code of its own.
package arch
