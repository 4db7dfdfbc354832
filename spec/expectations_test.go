package spec

import "testing"

// OneLine makes white space one space outside string literals only.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"  qty >=\n  0 ":               "qty >= 0",
		"k != 'a  b'":                  "k != 'a  b'",
		`k  != "x\"  y"  &&  v > 1`:    `k != "x\"  y" && v > 1`,
		"k == '''a  'b'  c''' ||  v>1": "k == '''a  'b'  c''' || v>1",
		`k == r'a\'  ||  v  > 1`:       `k == r'a\' || v > 1`,
		"k == 'open   ":                "k == 'open   ",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
