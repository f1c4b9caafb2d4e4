// Package arrowipc is dpsurv's hardened Arrow IPC codec: it encodes a
// record as one IPC stream (Encode) and reads IPC streams and files
// (Open, DecodeRecords, OpenFile) from hostile bytes. It knows nothing of
// dpsurv's schemas; schemas' Validator.DecodeIPC and ReadFile build on it.
//
// Contract:
//
//   - No input panics or exhausts memory: the framing and every flatbuffer
//     the Arrow reader follows are verified first (fbverify.go: forged
//     lengths and cyclic schemas would otherwise be fatal), decoded memory
//     is bounded (NewLimitAllocator, DecodeBound, DictBudget: dictionaries
//     count 4 bytes an entry before they are decoded), and CheckLengths and
//     CheckColumns check a batch's buffers against its lengths before its
//     values are read.
//   - Both Arrow formats are read: the stream format (what dpsurv writes)
//     and the file format (Feather v2), through its footer.
//   - OpenFile loads files of up to 4 GiB without copying their buffers
//     when their layout allows (arrowload.go: uncompressed little-endian
//     flat columns), with the same verification; any other file goes
//     through Arrow's reader.
//   - Encode is deterministic: the same record gives the same bytes.
//   - Records are reference counted; the caller releases what it is given.
//   - FuzzDecodeRecords and FuzzZeroCopyArrow exercise this (schemas'
//     FuzzDecodeIPC the validator on top).
package arrowipc
