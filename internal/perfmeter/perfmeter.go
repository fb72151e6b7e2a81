// Package perfmeter holds what the repository's benchmarks measure with
// beyond the testing package.
package perfmeter
