//go:build !race

package cacheprog_test

const raceEnabled = false
