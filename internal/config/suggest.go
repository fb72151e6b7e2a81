package config

import (
	"reflect"
	"strings"
)

// settingNames are the settings a table of the user's file takes: the
// toml names of t's fields (a struct).
func settingNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if n, _, _ := strings.Cut(f.Tag.Get("toml"), ","); n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

// nearSetting is the setting an unknown one (its dotted path's parts)
// most likely meant, as the whole path ("providers.x.base_url" for
// providers.x.baseurl, "providers.x" for provider.x): the first part the
// user's file does not take, replaced by the same name but for case, _
// and - ("baseurl", "envkey"), else by the only one a letter away
// ("provider"); "" for none.
func nearSetting(path []string) string {
	t := reflect.TypeFor[User]()
	for i, part := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
			continue
		case reflect.Struct:
		default:
			return ""
		}
		var next reflect.Type
		for f := range t.Fields() {
			if n, _, _ := strings.Cut(f.Tag.Get("toml"), ","); n == part {
				next = f.Type
			}
		}
		if next == nil {
			near := nearName(part, settingNames(t))
			if near == "" {
				return ""
			}
			return strings.Join(append(append([]string{}, path[:i]...), append([]string{near}, path[i+1:]...)...), ".")
		}
		t = next
	}
	return ""
}

// nearName is the one of names that name most likely meant (see
// nearSetting).
func nearName(name string, names []string) string {
	norm := func(s string) string { return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s)) }
	for _, n := range names {
		if norm(n) == norm(name) {
			return n
		}
	}
	found := ""
	for _, n := range names {
		if editDistance(norm(name), norm(n)) == 1 {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
