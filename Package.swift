// swift-tools-version: 6.0
import PackageDescription

// Warnings are errors in the test command (scripts/test.sh passes -warnings-as-errors): a package that
// others depend on cannot carry unsafe flags.
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
  name: "tipipe",
  products: [
    .library(name: "PipelineGraph", targets: ["PipelineGraph"]),
    .library(name: "PipelineTestKit", targets: ["PipelineTestKit"]),
    .library(name: "Nodes", targets: ["Nodes"]),
    .library(name: "MediaSynthesis", targets: ["MediaSynthesis"]),
    .library(name: "TiCloudStorage", targets: ["TiCloudStorage"]),
    .executable(name: "tipipe", targets: ["tipipe"]),
  ],
  targets: [
    .systemLibrary(name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavcodec"),
    .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl"),
    .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto"),
    .target(name: "PipelineGraph", swiftSettings: strict),
    .target(name: "PipelineTestKit", dependencies: ["PipelineGraph"], swiftSettings: strict),
    .target(
      name: "Nodes",
      dependencies: ["PipelineGraph", "CFFmpeg", "CCurl", "CCrypto"],
      swiftSettings: strict
    ),
    .target(name: "MediaSynthesis", dependencies: ["Nodes", "PipelineGraph"], swiftSettings: strict),
    .target(name: "TiCloudStorage", dependencies: ["Nodes", "PipelineGraph"], swiftSettings: strict),
    .executableTarget(
      name: "tipipe",
      dependencies: ["TiCloudStorage", "MediaSynthesis", "Nodes", "PipelineGraph"],
      path: "Sources/Examples/tipipe",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "GraphBenchmark",
      dependencies: ["PipelineGraph"],
      path: "Benchmarks/GraphBenchmark",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "DecodeBenchmark",
      dependencies: ["MediaSynthesis", "Nodes", "PipelineGraph"],
      path: "Benchmarks/DecodeBenchmark",
      swiftSettings: strict
    ),
    .testTarget(
      name: "PipelineGraphTests",
      dependencies: ["PipelineGraph", "PipelineTestKit"],
      swiftSettings: strict
    ),
    .target(
      name: "MediaTestSupport",
      dependencies: ["MediaSynthesis", "Nodes", "PipelineGraph", "PipelineTestKit"],
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
      name: "NodesTests",
      dependencies: ["MediaSynthesis", "Nodes", "PipelineGraph", "PipelineTestKit", "MediaTestSupport"],
      swiftSettings: strict
    ),
  ]
)
