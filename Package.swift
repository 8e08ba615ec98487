// swift-tools-version: 6.0
import PackageDescription

// Warnings are errors in the test command (scripts/test.sh passes -warnings-as-errors): a package that
// others depend on cannot carry unsafe flags.
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

// Linux only (Debian 12 and its FFmpeg 5.1, libcurl, OpenSSL): SwiftPM's `platforms` lists Apple
// platforms alone, so none is declared; the system libraries name their apt providers.
let package = Package(
  name: "tipipe",
  products: [
    .library(name: "PipelineGraph", targets: ["PipelineGraph"]),
    .library(name: "PipelineTestKit", targets: ["PipelineTestKit"]),
    .library(name: "Nodes", targets: ["Nodes"]),
    .library(name: "MediaSynthesis", targets: ["MediaSynthesis"]),
    .library(name: "TiCloudStorage", targets: ["TiCloudStorage"]),
    .library(name: "TiCloudStorageTesting", targets: ["TiCloudStorageTesting"]),
    .library(name: "CloudServer", targets: ["CloudServer"]),
    .library(name: "DesktopOutputs", targets: ["DesktopOutputs"]),
    .library(name: "TrackRecording", targets: ["TrackRecording"]),
    .executable(name: "tipipe", targets: ["tipipe"]),
  ],
  targets: [
    // Debian 12's packages (scripts/setup.sh installs them).
    // FFmpeg's and SDL2's headers only: their functions are linked through LazyLibraries, which loads
    // each library on the first call of one of its functions (no pkgConfig: it would link them).
    .systemLibrary(
      name: "CFFmpeg", path: "Sources/CFFmpeg",
      providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libswresample-dev", "libswscale-dev"])]
    ),
    .systemLibrary(
      name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .systemLibrary(
      name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
      providers: [.apt(["libmicrohttpd-dev"])]),
    .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(
      name: "CArchive", path: "Sources/CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
    // No pkgConfig: sdl2.pc adds -D_REENTRANT, which SwiftPM refuses with a warning; the headers are in
    // /usr/include/SDL2.
    .systemLibrary(name: "CSDL2", path: "Sources/CSDL2", providers: [.apt(["libsdl2-dev"])]),
    // Stubs of the FFmpeg and SDL2 functions tipipe calls, each library loaded on its first call
    // (scripts/lazy-libraries.py writes them): ~120 shared libraries fewer at every start.
    .target(name: "LazyLibraries", path: "Sources/LazyLibraries", exclude: ["symbols.txt"]),
    // What every byte an export writes passes through: the Annex B start code search (SSE2) and the
    // preallocation of the file (fallocate, declared only under _GNU_SOURCE).
    .target(name: "MediaKernels", path: "Sources/MediaKernels"),
    .target(name: "PipelineGraph", swiftSettings: strict),
    .target(name: "PipelineTestKit", dependencies: ["PipelineGraph"], swiftSettings: strict),
    .target(
      name: "Nodes",
      dependencies: ["PipelineGraph", "CFFmpeg", "LazyLibraries", "MediaKernels", "CCurl", "CCrypto"],
      swiftSettings: strict
    ),
    .target(name: "MediaSynthesis", dependencies: ["Nodes", "PipelineGraph"], swiftSettings: strict),
    .target(name: "TiCloudStorage", dependencies: ["Nodes", "PipelineGraph", "CArchive"], swiftSettings: strict),
    // The SDK on a virtual clock for an application's tests (a product: the deterministic path through the
    // public facade).
    .target(
      name: "TiCloudStorageTesting", dependencies: ["TiCloudStorage", "Nodes", "PipelineGraph"], swiftSettings: strict),
    // The package's Replay under a test's control: manual executor, virtual clock, timed outputs, fixture
    // libraries. Not a product: the engine is package-internal (the SDK's TiCloudStorageReplay is the one
    // public replay type).
    .target(
      name: "ReplayTestKit", dependencies: ["TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph"],
      swiftSettings: strict),
    // The reference server of spec/cloud-api.md (`tipipe serve`), for development, tests and benchmarks.
    .target(
      name: "CloudServer", dependencies: ["Nodes", "PipelineGraph", "CMicroHTTPD", "CArchive"], swiftSettings: strict),
    // Outputs one can see and hear (SDL2): apart, so that the core and headless users do not link SDL.
    .target(
      name: "DesktopOutputs", dependencies: ["Nodes", "PipelineGraph", "CSDL2", "LazyLibraries"], swiftSettings: strict),
    // Seed 003's TrackRecorder: decoded tracks recorded into fragmented MP4 (H.264 + AAC).
    .target(name: "TrackRecording", dependencies: ["Nodes", "PipelineGraph"], swiftSettings: strict),
    .executableTarget(
      name: "tipipe",
      dependencies: [
        "TiCloudStorage", "CloudServer", "MediaSynthesis", "Nodes", "PipelineGraph", "DesktopOutputs", "TrackRecording",
      ],
      path: "Sources/Examples/tipipe",
      // Released, the Swift runtime and Foundation are linked in: a process starts without resolving
      // their symbols (dynamic linking was a quarter of a snapshot's CPU; `tipipe --help` went from 0.82 to
      // 0.67 of `ffmpeg -version`). Only this executable, and only in release: the sanitizers' runtimes
      // do not work with a static Foundation (ThreadSanitizer's allocator aborts on its first free).
      swiftSettings: strict + [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
      linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]
    ),
    .testTarget(
      name: "PipelineGraphTests",
      dependencies: ["PipelineGraph", "PipelineTestKit"],
      swiftSettings: strict
    ),
    .target(
      name: "MediaTestSupport",
      dependencies: ["MediaSynthesis", "Nodes", "PipelineGraph", "PipelineTestKit", "ReplayTestKit", "TiCloudStorage"],
      path: "Tests/MediaTestSupport",
      swiftSettings: strict
    ),
    .testTarget(
      name: "ExportTests",
      dependencies: [
        "TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph", "PipelineTestKit", "MediaTestSupport",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "CloudTests",
      dependencies: [
        "CloudServer", "TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph", "MediaTestSupport",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "ReplayTests",
      dependencies: [
        "CloudServer", "TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph", "MediaTestSupport",
        "ReplayTestKit",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "SDKTests",
      dependencies: [
        "CloudServer", "TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph", "MediaTestSupport",
        "PipelineTestKit", "TiCloudStorageTesting",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "RecorderTests",
      dependencies: [
        "TrackRecording", "Nodes", "PipelineGraph", "PipelineTestKit", "MediaTestSupport", "ReplayTestKit",
        "TiCloudStorage",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NodesTests",
      dependencies: [
        "MediaSynthesis", "Nodes", "PipelineGraph", "PipelineTestKit", "MediaTestSupport", "DesktopOutputs",
        // libavcodec's own parser, the judge of the H.264 parameter sets read without it.
        "CFFmpeg",
      ],
      swiftSettings: strict
    ),
  ]
)
