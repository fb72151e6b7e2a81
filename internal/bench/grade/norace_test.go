//go:build !race

package grade_test

const raceEnabled = false
