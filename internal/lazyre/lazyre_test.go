package lazyre

import (
	"os"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

var digits = Regexp{Expr: `^[0-9]+$`}

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{{"123", true}, {"", false}, {"12a", false}} {
		if got := digits.Get().MatchString(tc.in); got != tc.want {
			t.Errorf("MatchString(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestGetOnceConcurrently(t *testing.T) {
	r := &Regexp{Expr: `a+`}
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = r.Get() }()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("Get returned different values: %p and %p", got[0], got[i])
		}
	}
}

func TestInvalidPanicsOnFirstUse(t *testing.T) {
	r := &Regexp{Expr: `(`}
	defer func() {
		if recover() == nil {
			t.Error("Get of an invalid expression did not panic")
		}
	}()
	r.Get()
}
