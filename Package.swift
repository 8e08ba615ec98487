// swift-tools-version: 6.0
import PackageDescription

let strict: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .unsafeFlags(["-warnings-as-errors"], .when(configuration: .release)),
]

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
    .target(
      name: "PipelineGraph",
      // Exclusivity is enforced statically; the dynamic checks cost ~15% of the engine's hot path.
      swiftSettings: strict + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
    ),
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
