// The protocol between the grader and a module's test program, in one place for both sides: the
// environment the grader sets, the marker lines and exit codes the test program answers with.
// The events themselves (one JSON object a line on the results channel) are written by
// grader/testing/src/main.cpp and read by grader/src/run/runner.cpp; observations by
// kiln/observe.h. docs/authoring.md lists every KILN_* variable.
#pragma once

namespace kiln::protocol {

// Set by the grader for the test program.
inline constexpr char kResultsFd[] = "KILN_RESULTS_FD";            // the descriptor events go to
inline constexpr char kCheckTimeouts[] = "KILN_CHECK_TIMEOUTS";    // "Suite.Test=10;Suite.Other=30"
inline constexpr char kSeed[] = "KILN_SEED";                       // the inputs' seed
inline constexpr char kSanitized[] = "KILN_SANITIZED";             // the sanitized twin: no crash handlers
inline constexpr char kJudge[] = "KILN_JUDGE";                     // the judge: the observations' file
inline constexpr char kSpeedRound[] = "KILN_SPEED_ROUND";          // a speed check's timed round
inline constexpr char kSpeedCalls[] = "KILN_SPEED_CALLS";          // calls in a timed run
inline constexpr char kSpeedSkip[] = "KILN_SPEED_SKIP";            // the empty run: draw inputs, call nothing
inline constexpr char kSpeedVerify[] = "KILN_SPEED_VERIFY";        // the verifier: a timed run's results
inline constexpr char kTensors[] = "KILN_TENSORS";                 // check -v: a failing comparison's whole tensors

// The event channel's descriptor in the test program, and the sandbox wrapper's status descriptor.
inline constexpr int kEventFd = 3;
inline constexpr int kStatusFd = 4;

// Written to standard error by the test program: the stack's frames between a marker and the end
// marker, at a crash and at a check that overran its time, innermost first. The frame the signal
// interrupted comes first, on a line that begins with kInterruptedFrame: its address is the
// instruction itself. Every other frame's is a return address, one past its call.
inline constexpr char kFramesMarker[] = "[kiln-frames]";
inline constexpr char kStuckMarker[] = "[kiln-stuck]";
inline constexpr char kInterruptedFrame[] = "[kiln-interrupted] ";
inline constexpr char kFramesEnd[] = "[kiln-frames-end]";

// Exit codes: a check that overran its time (after kStuckMarker), and a sanitizer's report.
inline constexpr int kStuckExit = 85;
inline constexpr int kSanitizerExit = 86;

// How kiln::NotImplemented's message begins: "not written yet: Tensor::reshape (tensor.cpp:42)".
inline constexpr char kNotWrittenYet[] = "not written yet: ";

}  // namespace kiln::protocol
