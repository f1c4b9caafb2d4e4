package sanitize

import "strconv"

// SanitizedKey is the Kafka key of a sanitized message. Default-deny covers
// keys and headers too: producers commonly key by patient (an MRN, a name),
// so the input key is never copied. The key is the input partition number,
// which is public information (the dpsurv-source header names it already):
// every message of one input partition goes to one output partition, so a
// producer that keys by patient keeps each patient's messages in order on
// the sanitized topic, and nothing about the input key beyond its partition
// is revealed. No input header is copied to the sanitized topic either; the
// only header is dpsurv-source (topic/partition/offset of the input).
func SanitizedKey(partition int) []byte {
	return []byte("p" + strconv.Itoa(partition))
}
