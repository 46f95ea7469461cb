"""The sections that go past the floor: a model on the reader's machine (``focus``),
serving modes, paged KV, speculative decoding, number formats, rack physics, hot experts,
node-limited dispatch, serving systems, the layout search the command line uses, and
queueing (tail latency at a request rate). Built
on the core and the chapter modules; nothing in them imports this package."""
