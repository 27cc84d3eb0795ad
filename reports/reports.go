// Package reports renders runs and what package analysis finds in them for
// people and tools: summaries, baseline vs candidate comparisons that open
// with what changed, and the test-plan history, as markdown (cut to fit a
// GitHub step summary), plain tables, CSV, JSON, JUnit XML or
// self-contained HTML pages with charts. It reads runs through package
// testrun and writes only to the writer it is given.
package reports
