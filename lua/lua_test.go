package lua_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redisync/redisync/lua"
)

// A part that defines a function is pasted, not loaded: a script that
// calls the function without naming the part compiles, and fails only
// when Redis runs that branch (Lua looks the name up as a global then).
// Every call must therefore come after the part's text in Source.
func TestPartFunctionsArePasted(t *testing.T) {
	defines := regexp.MustCompile(`(?m)^local function (\w+)\(`)
	comment := regexp.MustCompile(`--[^\n]*`)
	names, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	// The functions of parts: those defined in more than one script.
	sources := map[string]string{}
	count := map[string]int{}
	for _, name := range names {
		src, err := lua.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		src = comment.ReplaceAllString(src, "")
		sources[name] = src
		for _, m := range defines.FindAllStringSubmatch(src, -1) {
			count[m[1]]++
		}
	}
	var shared []string
	for fn, n := range count {
		if n > 1 {
			shared = append(shared, fn)
		}
	}
	if !slices.Contains(shared, "takeToken") {
		t.Fatalf("part functions found: %v, want takeToken among them", shared)
	}
	for name, src := range sources {
		defined := map[string]int{}
		for _, m := range defines.FindAllStringSubmatchIndex(src, -1) {
			defined[src[m[2]:m[3]]] = m[0]
		}
		for _, fn := range shared {
			// The first call: the first use that is not the definition.
			at := -1
			for _, m := range regexp.MustCompile(`\b`+fn+`\(`).FindAllStringIndex(src, -1) {
				if !strings.HasSuffix(src[:m[0]], "function ") {
					at = m[0]
					break
				}
			}
			if at < 0 {
				continue
			}
			if def, ok := defined[fn]; !ok || def > at {
				t.Errorf("%s calls %s before (or without) the part that defines it", name, fn)
			}
		}
	}
}

// Every script's text is what Source makes of it: no part line is left
// unpasted (an indented one is refused rather than kept as a comment).
func TestEveryPartPasted(t *testing.T) {
	names, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := lua.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(src, "-- part:") {
			t.Errorf("%s: a part line was left in the text Redis runs", name)
		}
	}
}
