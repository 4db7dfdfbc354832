package compile

import (
	"encoding/json"
	"testing"
)

// Every change kind has one word, which a saved plan reads back as the
// same change; an unknown word is an error, not a silent default.
func TestChangeWords(t *testing.T) {
	for k := range changeWords {
		for _, c := range []Change{{Kind: ChangeKind(k)}, {Kind: ChangeKind(k), Column: "n"}} {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var back Change
			if err := json.Unmarshal(b, &back); err != nil || back != c {
				t.Errorf("%s: read back as %v (%v)", b, back, err)
			}
		}
	}
	var c Change
	if err := json.Unmarshal([]byte(`"column_renamed:n"`), &c); err == nil {
		t.Errorf("an unknown change word was read as %v", c)
	}
}
