"""What the tests and the benchmarks share: one tier on moto (:mod:`.tier`), a miniature deployed
stack (:mod:`.stack`), Lambda SQS events (:mod:`.events`) and the Lambda context (:mod:`.context`)."""
