// Package harness is the one reader of what a cell's harness wrote. Read
// decides which file that is -- result.json, the harness's own JSON by
// the spec's mapping (harness.native_result), or a standard benchmark
// client's output (harness.result) -- and returns the cell's result, or
// an error that says where in the file the problem is: collect calls it
// once a cell, and kvsweep result read takes the same choice for one
// file.
//
// Package result keeps result.json v1 itself: its schema, its parser
// with the fast path, and the types of a result. That file is the
// contract with harness authors, the schema validator is a heavy
// dependency only result may pull in, and analysis and reports need the
// types without any reader. What harness holds is everything else a
// harness may write, mapped onto those types: the native mapping
// (native.go) and each client format in a file of its own
// (vllmbench.go, sglangbench.go, aiperf.go, inferenceperf.go; the
// formats no reader takes, LMCache's and Dynamo's, are refused by name in
// shape.go).
//
// Every reader here and result.json's parser find places with one
// positioned JSON walker, jsonscan.Walker: both packages need it and
// result may not import this one.
package harness
