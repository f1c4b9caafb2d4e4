package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// Member is one consumer-group member and the partitions of one topic it
// is assigned.
type Member struct {
	ID         string
	ClientID   string
	Partitions []int
}

// GroupState describes a consumer group: its state (Stable,
// PreparingRebalance, ...) and members with their assignments for topic.
type GroupState struct {
	State   string
	Members []Member
}

// Assigned is the number of members that own at least one partition.
func (g GroupState) Assigned() int {
	n := 0
	for _, m := range g.Members {
		if len(m.Partitions) > 0 {
			n++
		}
	}
	return n
}

// DescribeGroup asks the group coordinator for the members of group and
// their assignments for topic.
func DescribeGroup(ctx context.Context, conn Config, group, topic string) (GroupState, error) {
	t, err := conn.Transport()
	if err != nil {
		return GroupState{}, fmt.Errorf("describe group: %w", err)
	}
	defer t.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(conn.Brokers...), Transport: t, Timeout: 10 * time.Second}
	resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return GroupState{}, fmt.Errorf("describe group: %w", Classify(err))
	}
	for _, g := range resp.Groups {
		if g.GroupID != group {
			continue
		}
		if g.Error != nil {
			return GroupState{}, fmt.Errorf("describe group: %w", g.Error)
		}
		st := GroupState{State: g.GroupState}
		for _, m := range g.Members {
			mem := Member{ID: m.MemberID, ClientID: m.ClientID}
			for _, at := range m.MemberAssignments.Topics {
				if at.Topic == topic {
					mem.Partitions = append(mem.Partitions, at.Partitions...)
				}
			}
			sort.Ints(mem.Partitions)
			st.Members = append(st.Members, mem)
		}
		sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
		return st, nil
	}
	return GroupState{}, errors.New("describe group: group missing from the response")
}

// WaitForGroup polls the group until it is Stable with exactly n members,
// each owning at least one partition of topic, and returns that state.
func WaitForGroup(ctx context.Context, conn Config, group, topic string, n int, timeout time.Duration) (GroupState, error) {
	return waitForGroup(ctx, group, n, timeout, func(ctx context.Context) (GroupState, error) {
		return DescribeGroup(ctx, conn, group, topic)
	})
}

// waitForGroup is WaitForGroup with the describe call passed in: it
// describes at least once, and on timeout reports the last state seen.
func waitForGroup(ctx context.Context, group string, n int, timeout time.Duration, describe func(context.Context) (GroupState, error)) (GroupState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last GroupState
	var lastErr error
	for {
		st, err := describe(ctx)
		if err == nil {
			last = st
			if st.State == "Stable" && len(st.Members) == n && st.Assigned() == n {
				return st, nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil && last.State == "" {
				return last, fmt.Errorf("wait for group %s: %d members wanted: %w", group, n, lastErr)
			}
			return last, fmt.Errorf("wait for group %s: want %d members each with partitions, have state %q with %d members (%d assigned)",
				group, n, last.State, len(last.Members), last.Assigned())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
