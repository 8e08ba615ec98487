// swift-tools-version: 6.0
import PackageDescription

// A second user of tipipe outside its targets: scene changes found on decoded pictures decide, in the
// same pass, which seconds of an ordinary media file go into an MP4 cut exactly where each scene
// begins — through the public API alone (no C module). The test script builds, tests and runs it
// against the project by path.
let package = Package(
  name: "SceneCuts",
  dependencies: [.package(name: "tipipe", path: "../..")],
  targets: [
    .target(
      name: "SceneCuts",
      dependencies: [.product(name: "Nodes", package: "tipipe"), .product(name: "PipelineGraph", package: "tipipe")],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .executableTarget(
      name: "scenecuts",
      dependencies: [
        "SceneCuts", .product(name: "TiCloudStorage", package: "tipipe"), .product(name: "Nodes", package: "tipipe"),
        .product(name: "PipelineGraph", package: "tipipe"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
      name: "SceneCutsTests",
      dependencies: [
        "SceneCuts", .product(name: "MediaSynthesis", package: "tipipe"), .product(name: "Nodes", package: "tipipe"),
        .product(name: "PipelineGraph", package: "tipipe"), .product(name: "PipelineTestKit", package: "tipipe"),
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
  ]
)
