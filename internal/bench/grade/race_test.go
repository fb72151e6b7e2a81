//go:build race

package grade_test

const raceEnabled = true
