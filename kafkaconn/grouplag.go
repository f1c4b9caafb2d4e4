package kafkaconn

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// PartitionLag is a consumer group's position on one partition.
type PartitionLag struct {
	Partition int
	// Committed is the group's committed offset (the log start when the
	// group has none); End the partition's last stable offset (the end
	// offset a read_committed consumer can reach: the high watermark
	// unless a transaction is open).
	Committed, End int64
}

// Lag is End - Committed (never negative).
func (p PartitionLag) Lag() int64 { return max(0, p.End-p.Committed) }

// GroupLag compares a consumer group's committed offsets with the end
// offsets of every partition of topic — whether or not any member has the
// partition assigned — so that a partition nobody consumes shows.
func GroupLag(ctx context.Context, c Config, group, topic string) ([]PartitionLag, error) {
	ctx, cl, done, err := c.openAdmin(ctx)
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", err)
	}
	defer done()
	meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", Classify(err))
	}
	var ids []int
	for _, tp := range meta.Topics {
		if tp.Name != topic {
			continue
		}
		if tp.Error != nil {
			return nil, fmt.Errorf("group lag: %w", tp.Error)
		}
		for _, p := range tp.Partitions {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("group lag: topic %s has no partitions", topic)
	}
	sort.Ints(ids)
	var reqs []kafka.OffsetRequest
	for _, id := range ids {
		reqs = append(reqs, kafka.FirstOffsetOf(id), kafka.LastOffsetOf(id))
	}
	// read_committed: the end is the last stable offset, which is what a
	// read_committed consumer can reach (an open transaction holds it back).
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs},
		IsolationLevel: kafka.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", Classify(err))
	}
	first, last := map[int]int64{}, map[int]int64{}
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("group lag: partition %d: %w", po.Partition, po.Error)
		}
		first[po.Partition], last[po.Partition] = po.FirstOffset, po.LastOffset
	}
	of, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ids}})
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", Classify(err))
	}
	if of.Error != nil {
		return nil, fmt.Errorf("group lag: %w", of.Error)
	}
	committed := map[int]int64{}
	for _, p := range of.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("group lag: partition %d: %w", p.Partition, p.Error)
		}
		committed[p.Partition] = p.CommittedOffset
	}
	out := make([]PartitionLag, len(ids))
	for i, id := range ids {
		c, ok := committed[id]
		if !ok || c < first[id] {
			c = first[id]
		}
		out[i] = PartitionLag{Partition: id, Committed: c, End: last[id]}
	}
	return out, nil
}

// TopicMaxMessageBytes returns the max.message.bytes each topic reports
// (its own setting or the broker default it inherits). A topic whose
// value is missing or unreadable is left out.
func TopicMaxMessageBytes(ctx context.Context, c Config, topics ...string) (map[string]int, error) {
	ctx, cl, done, err := c.openAdmin(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	defer done()
	req := &kafka.DescribeConfigsRequest{}
	for _, tp := range topics {
		req.Resources = append(req.Resources, kafka.DescribeConfigRequestResource{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: tp, ConfigNames: []string{"max.message.bytes"}})
	}
	resp, err := cl.DescribeConfigs(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", Classify(err))
	}
	out := map[string]int{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			continue
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName != "max.message.bytes" {
				continue
			}
			if v, err := strconv.Atoi(e.ConfigValue); err == nil && v > 0 {
				out[r.ResourceName] = v
			}
		}
	}
	return out, nil
}

// Owners is a consumer group's membership and assignment of one topic.
type Owners struct {
	// Members are the group's member ids.
	Members map[string]bool
	// Partitions maps each partition a member holds to that member's id.
	Partitions map[int]string
}

// GroupOwners asks the group coordinator which member holds each partition
// of topic. While the group is not "Stable" (the returned state) the
// assignment is not final and Owners is empty.
func GroupOwners(ctx context.Context, c Config, group, topic string) (owners Owners, state string, err error) {
	ctx, cl, done, err := c.openAdmin(ctx)
	if err != nil {
		return Owners{}, "", fmt.Errorf("describe group: %w", err)
	}
	defer done()
	resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return Owners{}, "", fmt.Errorf("describe group: %w", Classify(err))
	}
	for _, g := range resp.Groups {
		if g.GroupID != group {
			continue
		}
		if g.Error != nil {
			return Owners{}, "", fmt.Errorf("describe group: %w", g.Error)
		}
		owners = Owners{Members: map[string]bool{}, Partitions: map[int]string{}}
		if g.GroupState != "Stable" {
			return owners, g.GroupState, nil
		}
		for _, m := range g.Members {
			owners.Members[m.MemberID] = true
			for _, at := range m.MemberAssignments.Topics {
				if at.Topic == topic {
					for _, p := range at.Partitions {
						owners.Partitions[p] = m.MemberID
					}
				}
			}
		}
		return owners, g.GroupState, nil
	}
	return Owners{}, "", fmt.Errorf("describe group: group %s missing from the response", group)
}
