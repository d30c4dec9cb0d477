// Entry of `npm run bench`: prints each figure beside the raw NATS client's, as a ratio.
console.log("no benchmarks yet");
