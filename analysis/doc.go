// Package analysis reads runs for what they mean: a baseline against a
// candidate (metric deltas with significance tests, verdict changes, the
// cells and cases one side lacks) and what changed between the two (images,
// commits, kvsweep, cluster, nodes, spec keys); the history's rows; the
// ledger of nodes that failed outside the test; and the gates (Check) that
// report --check and kvsweep ci exit by. It writes nothing: package
// reports renders what it finds.
package analysis
