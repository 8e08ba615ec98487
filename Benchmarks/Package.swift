// swift-tools-version: 6.0
import PackageDescription

// The benchmark programs, a package of their own so that they build only when asked
// (`swift build -c release --package-path Benchmarks`), against tipipe by path.
let package = Package(
  name: "tipipe-benchmarks",
  dependencies: [.package(name: "tipipe", path: "..")],
  targets: [
    .executableTarget(
      name: "GraphBenchmark",
      dependencies: [.product(name: "PipelineGraph", package: "tipipe")],
      path: "GraphBenchmark",
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .executableTarget(
      name: "DecodeBenchmark",
      dependencies: [
        .product(name: "MediaSynthesis", package: "tipipe"), .product(name: "Nodes", package: "tipipe"),
        .product(name: "PipelineGraph", package: "tipipe"),
      ],
      path: "DecodeBenchmark",
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
  ]
)
