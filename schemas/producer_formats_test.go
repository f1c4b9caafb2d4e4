package schemas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeIPCProducerFormats decodes messages written by Apache Arrow JS
// (testdata/arrowjs, made by make_fixtures.mjs there): the stream format
// and the file format (Feather v2, tableToIPC(t, 'file')) are both
// accepted and give the same rows; the row with an unknown cohort is the
// only dead letter.
func TestDecodeIPCProducerFormats(t *testing.T) {
	for _, name := range []string{"tte_stream.arrows", "tte_file.arrow"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "arrowjs", name))
			if err != nil {
				t.Fatal(err)
			}
			mem := checkedMem(t)
			v := newTestValidator(t, Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days"}, mem)
			out, dead := v.DecodeIPC(data)
			defer out.Release()
			if got := out.NumRows(); got != 4 {
				t.Fatalf("good rows = %d, want 4 (dead letters %+v)", got, dead)
			}
			if len(dead) != 1 || dead[0].Reason != ReasonUnknownCohort || dead[0].RowIndex != 2 {
				t.Fatalf("dead letters = %+v, want one unknown_cohort at row 2", dead)
			}
			if got := out.Column(ColTime).ValueStr(1); got != "340.5" {
				t.Errorf("time[1] = %s, want 340.5", got)
			}
		})
	}
}

// TestDecodeIPCNotArrowHints: JSON or CSV bytes on an Arrow topic are
// dead-lettered as undecodable with a reason that says what they look like
// and names the setting (input.format); a truncated Feather file is
// undecodable, not a panic.
func TestDecodeIPCNotArrowHints(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("..", "testdata", "arrowjs", "tte_file.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, data, want string
	}{
		{"json object", `{"id":"a","time":3,"event":1,"cohort":"1"}`, "look like JSON: set input.format: json"},
		{"json array", " [{\"id\":\"a\"}]", "look like JSON"},
		{"csv", "id,time,event,cohort\na,3,1,1\n", "look like CSV"},
		{"binary", "\x01\x02\x03\x04\x05\x06\x07\x08", ""},
		{"truncated feather", string(file[:len(file)-20]), "feather"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			v := newTestValidator(t, Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days"}, mem)
			out, dead := v.DecodeIPC([]byte(tc.data))
			defer out.Release()
			if out.NumRows() != 0 || len(dead) != 1 || dead[0].Reason != ReasonUndecodable {
				t.Fatalf("rows %d, dead %+v: want one undecodable dead letter", out.NumRows(), dead)
			}
			if tc.want != "" && !strings.Contains(dead[0].Detail, tc.want) {
				t.Errorf("detail %q does not contain %q", dead[0].Detail, tc.want)
			}
			if tc.want == "" && strings.Contains(dead[0].Detail, "look like") {
				t.Errorf("detail %q guesses a format for binary bytes", dead[0].Detail)
			}
		})
	}
}
