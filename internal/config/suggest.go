package config

import (
	"reflect"
	"strings"

	"github.com/trussdev/truss/internal/suggest"
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
// user's file does not take, replaced by the one it most likely meant
// (suggest.Nearest: "baseurl", "envkey", "provder"); "" for none.
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
			near := suggest.Nearest(part, settingNames(t))
			if near == "" {
				return ""
			}
			return strings.Join(append(append([]string{}, path[:i]...), append([]string{near}, path[i+1:]...)...), ".")
		}
		t = next
	}
	return ""
}
