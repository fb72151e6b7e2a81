//go:build !race

package changes

// raceDetector is whether the tests run with the race detector, whose
// shadow memory and slowdown make a heap bound meaningless.
const raceDetector = false
