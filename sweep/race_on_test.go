//go:build race

package sweep

// raceDetector says the tests run with -race, which allocates where a
// normal build does not: allocation counts are not asserted then.
const raceDetector = true
