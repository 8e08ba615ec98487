// swift-tools-version: 6.0
import PackageDescription

// A user of tipipe outside its targets: its own node reading pixels, an export with a branch of its
// own, and a deterministic test of the node, through the public API alone (no C module). The test
// script builds it against the project by path, and against a tagged version of it.
let package = Package(
  name: "LumaDiff",
  dependencies: [.package(name: "tipipe", path: "../..")],
  targets: [
    .target(
      name: "LumaDiff",
      dependencies: [.product(name: "Nodes", package: "tipipe"), .product(name: "PipelineGraph", package: "tipipe")],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .executableTarget(
      name: "lumadiff",
      dependencies: [
        "LumaDiff", .product(name: "TiCloudStorage", package: "tipipe"),
        .product(name: "MediaSynthesis", package: "tipipe"), .product(name: "Nodes", package: "tipipe"),
        .product(name: "PipelineGraph", package: "tipipe"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
      name: "LumaDiffTests",
      dependencies: [
        "LumaDiff", .product(name: "MediaSynthesis", package: "tipipe"), .product(name: "Nodes", package: "tipipe"),
        .product(name: "PipelineGraph", package: "tipipe"), .product(name: "PipelineTestKit", package: "tipipe"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
  ]
)
