//go:build race

package page_test

// raceDetector is whether the tests run with the race detector, under
// which a single-threaded verification takes about 25 times as long.
const raceDetector = true
