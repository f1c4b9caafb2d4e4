package kafkaconn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// waitForGroup on a scripted describe, in a synctest bubble: the polls and
// the timeout pass on the fake clock, so a group that never forms costs no
// wall time and the last state seen is known exactly.
func TestWaitForGroupTimeoutAndPolling(t *testing.T) {
	stable1 := GroupState{State: "Stable", Members: []Member{{ID: "m1", Partitions: []int{0, 1, 2}}}}
	stable2 := GroupState{State: "Stable", Members: []Member{{ID: "m1", Partitions: []int{0, 1}}, {ID: "m2", Partitions: []int{2}}}}
	rebalancing := GroupState{State: "PreparingRebalance", Members: stable2.Members}
	errDown := errors.New("coordinator not available")
	type answer struct {
		st  GroupState
		err error
	}
	tests := []struct {
		name    string
		script  []answer // the describes' answers in order; the last repeats
		members int
		wantErr string
		wantIs  error
		wantSt  GroupState
		minCall int
	}{
		{"one member owns all partitions", []answer{{st: stable1}}, 1, "", nil, stable1, 1},
		{"two members after an error and a rebalance", []answer{{err: errDown}, {st: stable1}, {st: rebalancing}, {st: stable2}}, 2, "", nil, stable2, 4},
		{"two members never come", []answer{{st: rebalancing}, {st: stable1}}, 2,
			`wait for group g: want 2 members each with partitions, have state "Stable" with 1 members (1 assigned)`, nil, stable1, 3},
		{"the coordinator never answers", []answer{{err: errDown}}, 1, "wait for group g: 1 members wanted: coordinator not available", errDown, GroupState{}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				describe := func(ctx context.Context) (GroupState, error) {
					a := tc.script[min(calls, len(tc.script)-1)]
					calls++
					return a.st, a.err
				}
				start := time.Now()
				st, err := waitForGroup(context.Background(), "g", tc.members, 3*time.Second, describe)
				took := time.Since(start)
				if tc.wantErr == "" && err != nil {
					t.Fatal(err)
				}
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
						t.Errorf("error %v does not wrap %v", err, tc.wantIs)
					}
					if took != 3*time.Second {
						t.Errorf("gave up after %v, want the 3 s timeout", took)
					}
				}
				if st.State != tc.wantSt.State || len(st.Members) != len(tc.wantSt.Members) || st.Assigned() != tc.wantSt.Assigned() {
					t.Errorf("state %+v, want %+v", st, tc.wantSt)
				}
				if calls < tc.minCall {
					t.Errorf("%d describes, want at least %d (one every 50 ms until the timeout)", calls, tc.minCall)
				}
			})
		})
	}
}

// A timeout shorter than one describe still reports what that describe saw.
func TestWaitForGroupDescribesAtLeastOnce(t *testing.T) {
	st1 := GroupState{State: "Stable", Members: []Member{{ID: "m1", Partitions: []int{0}}}}
	calls := 0
	_, err := waitForGroup(context.Background(), "g", 2, 0, func(context.Context) (GroupState, error) {
		calls++
		return st1, nil
	})
	if calls != 1 || err == nil || !strings.Contains(err.Error(), `have state "Stable" with 1 members`) {
		t.Fatalf("%d describes, error %v; want 1 and the state it saw", calls, err)
	}
}
