package predicate

import "testing"

func TestScratch2(t *testing.T) {
	cols := diffColumns(t)
	for _, s := range []string{"c_big > 9007199254740992.0", "c_big > c_dbl", "c_big > c_num", "c_big >= 9223372036854775807.0", "c_big < 9223372036854775807.0"} {
		p, iss := Compile(s, cols)
		if iss != nil {
			t.Log(s, iss)
			continue
		}
		q, _ := p.SQL(nil)
		for _, v := range []int64{1<<53 + 1, 1 << 53, 9223372036854775807} {
			ok, err := p.Eval(map[string]Value{"c_big": v, "c_dbl": 9007199254740992.0, "c_num": 9007199254740992.0}, at)
			t.Log(s, v, ok, err, q)
		}
	}
}
