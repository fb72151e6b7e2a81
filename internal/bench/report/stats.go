package report

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Z95 is the standard normal quantile of a two-sided 95 % interval.
const Z95 = 1.959963984540054

// Wilson returns the Wilson score interval of a proportion: p is the observed
// share (successes ÷ n), n the number of independent units, z the normal
// quantile (Z95 for 95 %). With n = 0 it returns the uninformative [0, 1].
//
// p may be a mean of per-unit shares (a task's repeats averaged), in which
// case n counts the units (tasks), not the runs.
func Wilson(p float64, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	nf := float64(n)
	z2 := z * z
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = math.Max(0, centre-half), math.Min(1, centre+half)
	// At the bounds the interval ends exactly at the observation; rounding
	// must not leave it a hair short.
	if p <= 0 {
		lo = 0
	}
	if p >= 1 {
		hi = 1
	}
	return lo, hi
}

// McNemarExact returns the two-sided p-value of the exact (conditional)
// McNemar test: given b pairs where only the first arm succeeded and c where
// only the second did, the probability under Binomial(b+c, ½) of a split at
// least as uneven as the one observed, doubled and capped at 1. With no
// discordant pairs it returns 1.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// P(X ≤ k) for X ~ Binomial(n, ½), summed in log space so that large
	// n neither overflows the binomial coefficients nor underflows 2^-n.
	lgN, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := 0; i <= k; i++ {
		lgI, _ := math.Lgamma(float64(i + 1))
		lgNI, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgN - lgI - lgNI - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*sum)
}

// BootstrapDiff returns the percentile bootstrap interval (level 1-alpha,
// e.g. alpha 0.05) of mean(a) − mean(b) for paired samples: a[i] and b[i]
// are the two arms' results on unit i (a task's resolved share). Units are
// resampled with replacement, resamples times, from a PCG generator seeded
// with seed, so the same inputs in the same order give the same interval.
// With no units it returns NaN, NaN.
func BootstrapDiff(a, b []float64, resamples int, seed uint64, alpha float64) (lo, hi float64) {
	n := len(a)
	if n == 0 || len(b) != n || resamples <= 0 {
		return math.NaN(), math.NaN()
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
	}
	rng := rand.New(rand.NewPCG(seed, 0x7472757373)) // second word: "truss"
	means := make([]float64, resamples)
	for r := range means {
		s := 0.0
		for range n {
			s += d[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	slices.Sort(means)
	return quantile(means, alpha/2), quantile(means, 1-alpha/2)
}

// quantile is the linearly interpolated quantile (Hyndman and Fan's type 7,
// R's default) of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	i := int(math.Floor(h))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}
