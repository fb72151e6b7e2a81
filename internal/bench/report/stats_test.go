package report

import (
	"math"
	"math/big"
	"testing"
)

// TestWilsonPublished checks the interval against Newcombe (1998), "Two-sided
// confidence intervals for the single proportion: comparison of seven
// methods", Statistics in Medicine 17:857–872, Table II, method 3 (score
// interval without continuity correction), given there to four decimals.
func TestWilsonPublished(t *testing.T) {
	tests := []struct {
		x, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0.0000, 0.1611},
		{1, 29, 0.0061, 0.1718},
	}
	for _, tt := range tests {
		lo, hi := Wilson(float64(tt.x)/float64(tt.n), tt.n, Z95)
		if math.Abs(lo-tt.lo) > 0.00005 || math.Abs(hi-tt.hi) > 0.00005 {
			t.Errorf("Wilson(%d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", tt.x, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
}

func TestWilsonEdges(t *testing.T) {
	tests := []struct {
		name   string
		p      float64
		n      int
		lo, hi float64
	}{
		{"no units", 0, 0, 0, 1},
		{"all resolved", 1, 10, 0.7224672001371107, 1},
		{"none resolved", 0, 10, 0, 0.2775327998628892},
		{"half", 0.5, 4, 0.15003898915214947, 0.8499610108478506},
	}
	for _, tt := range tests {
		lo, hi := Wilson(tt.p, tt.n, Z95)
		if math.Abs(lo-tt.lo) > 1e-12 || math.Abs(hi-tt.hi) > 1e-12 {
			t.Errorf("%s: Wilson(%v, %d) = [%v, %v], want [%v, %v]", tt.name, tt.p, tt.n, lo, hi, tt.lo, tt.hi)
		}
		if lo > tt.p || hi < tt.p {
			t.Errorf("%s: interval [%v, %v] misses p = %v", tt.name, lo, hi, tt.p)
		}
	}
}

// mcnemarBig is the exact two-sided p-value computed directly with
// rationals: 2·Σ_{i≤min(b,c)} C(b+c, i) / 2^(b+c), capped at 1.
func mcnemarBig(b, c int) float64 {
	n := int64(b + c)
	sum := new(big.Int)
	for i := int64(0); i <= int64(min(b, c)); i++ {
		sum.Add(sum, new(big.Int).Binomial(n, i))
	}
	p := new(big.Rat).SetFrac(new(big.Int).Lsh(sum, 1), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := p.Float64()
	return math.Min(1, f)
}

func TestMcNemarExact(t *testing.T) {
	// Fagerland, Lydersen and Laake (2013), "The McNemar test for binary
	// matched-pairs data", BMC Medical Research Methodology 13:91: the
	// airway hyper-responsiveness example, 1 and 7 discordant pairs, exact
	// conditional p = 0.070 (= 18/256).
	if p := McNemarExact(1, 7); math.Abs(p-18.0/256) > 1e-15 {
		t.Errorf("McNemarExact(1, 7) = %v, want 18/256 = %v", p, 18.0/256)
	}
	tests := []struct{ b, c int }{
		{0, 0}, {0, 1}, {1, 0}, {0, 3}, {2, 8}, {8, 2}, {5, 5}, {4, 5},
		{10, 25}, {59, 121}, {300, 340}, {0, 60}, {1000, 1100},
	}
	for _, tt := range tests {
		got, want := McNemarExact(tt.b, tt.c), mcnemarBig(tt.b, tt.c)
		if want == 0 || math.Abs(got-want)/want > 1e-9 {
			t.Errorf("McNemarExact(%d, %d) = %v, want %v", tt.b, tt.c, got, want)
		}
		if got != McNemarExact(tt.c, tt.b) {
			t.Errorf("McNemarExact(%d, %d) is not symmetric", tt.b, tt.c)
		}
	}
	if p := McNemarExact(0, 0); p != 1 {
		t.Errorf("no discordant pairs: p = %v, want 1", p)
	}
}

func TestBootstrapDiff(t *testing.T) {
	a := []float64{1, 1, 0, 1, 0.5, 1, 0, 1, 1, 0}
	b := []float64{0, 1, 0, 0, 0.5, 1, 0, 0, 1, 0}
	lo1, hi1 := BootstrapDiff(a, b, 10000, 1, 0.05)
	lo2, hi2 := BootstrapDiff(a, b, 10000, 1, 0.05)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("same seed, different intervals: [%v, %v] and [%v, %v]", lo1, hi1, lo2, hi2)
	}
	// The observed difference is 0.3; each resample's mean is a multiple
	// of 0.1/2 between 0 and 0.5 here (differences are 0 or 1, one 0).
	if !(lo1 >= 0 && lo1 < 0.3 && hi1 > 0.3 && hi1 <= 0.6) {
		t.Errorf("interval [%v, %v] does not bracket the observed 0.3 plausibly", lo1, hi1)
	}
	lo3, hi3 := BootstrapDiff(a, b, 10000, 2, 0.05)
	if lo3 == lo1 && hi3 == hi1 {
		t.Logf("seeds 1 and 2 gave the same interval (possible with few distinct means)")
	}

	// Identical arms: every resample's difference is 0.
	if lo, hi := BootstrapDiff(a, a, 1000, 7, 0.05); lo != 0 || hi != 0 {
		t.Errorf("identical arms: [%v, %v], want [0, 0]", lo, hi)
	}
	// One arm resolves everything, the other nothing: exactly 1.
	ones, zeros := []float64{1, 1, 1}, []float64{0, 0, 0}
	if lo, hi := BootstrapDiff(ones, zeros, 1000, 7, 0.05); lo != 1 || hi != 1 {
		t.Errorf("all vs none: [%v, %v], want [1, 1]", lo, hi)
	}
	if lo, hi := BootstrapDiff(nil, nil, 1000, 7, 0.05); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("no tasks: [%v, %v], want NaN", lo, hi)
	}
}

// TestBootstrapCoverage: for a large sample the percentile interval agrees
// with the normal approximation mean ± 1.96·sd/√n to within a few percent.
func TestBootstrapCoverage(t *testing.T) {
	n := 400
	a, b := make([]float64, n), make([]float64, n)
	for i := range n {
		if i%5 != 0 {
			a[i] = 1 // 80 %
		}
		if i%2 == 0 {
			b[i] = 1 // 50 %
		}
	}
	mean, sq := 0.0, 0.0
	for i := range n {
		mean += a[i] - b[i]
	}
	mean /= float64(n)
	for i := range n {
		d := a[i] - b[i] - mean
		sq += d * d
	}
	se := math.Sqrt(sq/float64(n-1)) / math.Sqrt(float64(n))
	lo, hi := BootstrapDiff(a, b, 20000, 3, 0.05)
	if math.Abs(lo-(mean-Z95*se)) > 0.01 || math.Abs(hi-(mean+Z95*se)) > 0.01 {
		t.Errorf("bootstrap [%v, %v], normal approximation [%v, %v]", lo, hi, mean-Z95*se, mean+Z95*se)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for _, tt := range []struct{ q, want float64 }{{0, 1}, {1, 5}, {0.5, 3}, {0.25, 2}, {0.1, 1.4}} {
		if got := quantile(s, tt.q); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
}
