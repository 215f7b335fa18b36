#include "planner/plan_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/base/atomic_file.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner {
namespace {

Plan MakePlan(Scheme scheme, int64_t gpus) {
  Plan plan;
  plan.params.scheme = scheme;
  plan.topology_name = "dgx-h100-32node";
  plan.topology_source = "built-in";
  plan.num_gpus = gpus;
  plan.workload = Workload::Default();
  return plan;
}

// One plan per scheme, each with a non-default twist so that the round trip is tested.
std::vector<Plan> ExamplePlans() {
  std::vector<Plan> plans;
  Plan ring = MakePlan(Scheme("ring"), 8);
  ring.params.ring = 8;
  ring.params.layout = Layout::kStriped;
  ring.workload.mask = Mask::Full();
  plans.push_back(ring);

  Plan allgather = MakePlan(Scheme("allgather-kv"), 16);
  allgather.params.ring = 16;
  allgather.params.layout = Layout::kContiguous;
  allgather.workload.mask = Mask::Window(4096);
  allgather.workload.pass = Pass::kForward;
  plans.push_back(allgather);

  Plan ulysses = MakePlan(Scheme("ulysses"), 8);
  ulysses.params.ulysses = 8;
  ulysses.params.cache_forward = true;
  ulysses.workload.dtype = DType::kFp16;
  ulysses.workload.partial_dtype = DType::kBf16;
  plans.push_back(ulysses);

  Plan usp = MakePlan(Scheme("usp"), 32);
  usp.params.ulysses = 4;
  usp.params.ring = 8;
  usp.params.placement = {"ring", "ulysses"};
  usp.workload.pass = Pass::kBackward;
  plans.push_back(usp);

  Plan loongtrain = MakePlan(Scheme("loongtrain"), 32);
  loongtrain.params.ulysses = 2;
  loongtrain.params.ring = 16;
  loongtrain.params.window = 4;
  loongtrain.params.placement = {"inner", "head", "outer"};
  plans.push_back(loongtrain);

  Plan attention2d = MakePlan(Scheme("attention2d"), 32);
  attention2d.params.tile_a = 4;
  attention2d.params.tile_b = 8;
  attention2d.workload.batch = 2;
  attention2d.workload.seq_len = 96 * 1024;
  attention2d.workload.q_heads = 32;
  attention2d.workload.kv_heads = 32;
  attention2d.workload.head_dim = 64;
  plans.push_back(attention2d);

  Plan mesh = MakePlan(Scheme("mesh"), 256);
  mesh.params.tile_a = 8;
  mesh.params.tile_b = 32;
  mesh.params.cache_forward = true;
  mesh.params.reduce_chain = ReduceChain::kOwnerFirst;
  mesh.params.placement = {"kv", "q"};
  // Documents: 40 documents summing to 2^20 (so the writer wraps the array over lines).
  std::vector<int64_t> lengths(39, 16384);
  lengths.push_back((int64_t{1} << 20) - 39 * 16384);
  mesh.workload.mask = Mask::Documents(lengths);
  mesh.workload.mask.documents_source = "data/docs \"v2\".txt";
  plans.push_back(mesh);

  Plan mesh_ulysses = MakePlan(Scheme("mesh-ulysses"), 64);
  mesh_ulysses.params.ulysses = 2;
  mesh_ulysses.params.tile_a = 4;
  mesh_ulysses.params.tile_b = 8;
  mesh_ulysses.params.placement = {"ulysses", "kv", "q"};
  mesh_ulysses.workload.mask = Mask::Documents({1 << 19, 1 << 18, 1 << 18});  // no source
  plans.push_back(mesh_ulysses);

  Plan attention2d_o = MakePlan(Scheme("attention2d-o"), 64);
  attention2d_o.params.tile_a = 8;
  attention2d_o.params.tile_b = 8;
  attention2d_o.params.cache_forward = true;
  attention2d_o.params.placement = {"kv", "q"};
  plans.push_back(attention2d_o);

  for (Plan& p : plans) {
    if (p.params.placement.empty())
      p.params.placement = CanonicalPlacement(planner::RankDims(p.params));
  }
  return plans;
}

void ExpectSamePlan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  EXPECT_EQ(a.topology_name, b.topology_name);
  EXPECT_EQ(a.topology_source, b.topology_source);
  EXPECT_EQ(a.num_gpus, b.num_gpus);
  const Workload &x = a.workload, &y = b.workload;
  EXPECT_EQ(x.batch, y.batch);
  EXPECT_EQ(x.seq_len, y.seq_len);
  EXPECT_EQ(x.q_heads, y.q_heads);
  EXPECT_EQ(x.kv_heads, y.kv_heads);
  EXPECT_EQ(x.head_dim, y.head_dim);
  EXPECT_EQ(x.dtype, y.dtype);
  EXPECT_EQ(x.partial_dtype, y.partial_dtype);
  EXPECT_EQ(x.pass, y.pass);
  EXPECT_EQ(x.mask.kind, y.mask.kind);
  EXPECT_EQ(x.mask.window, y.mask.window);
  EXPECT_EQ(x.mask.prefix, y.mask.prefix);
  EXPECT_EQ(x.mask.document_lengths, y.mask.document_lengths);
  EXPECT_EQ(x.mask.documents_source, y.mask.documents_source);
  const SchemeParams &s = a.params, &t = b.params;
  EXPECT_EQ(s.scheme, t.scheme);
  EXPECT_EQ(s.layout, t.layout);
  EXPECT_EQ(s.ulysses, t.ulysses);
  EXPECT_EQ(s.ring, t.ring);
  EXPECT_EQ(s.window, t.window);
  EXPECT_EQ(s.tile_a, t.tile_a);
  EXPECT_EQ(s.tile_b, t.tile_b);
  EXPECT_EQ(s.cache_forward, t.cache_forward);
  EXPECT_EQ(s.reduce_chain, t.reduce_chain);
  EXPECT_EQ(s.placement, t.placement);
}

TEST(PlanIoTest, RoundTripsEveryScheme) {
  const auto plans = ExamplePlans();
  ASSERT_EQ(plans.size(), std::size(planner::AllSchemes()));
  for (const Plan& plan : plans) {
    SCOPED_TRACE(std::string(SchemeName(plan.params.scheme)));
    const std::string text = PlanToToml(plan);
    auto back = ParsePlanToml(text, "p.toml");
    ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << text;
    ExpectSamePlan(plan, *back);
    EXPECT_EQ(PlanToToml(*back), text);
  }
}

TEST(PlanIoTest, DocumentsMaskIsStoredInline) {
  Plan plan = ExamplePlans()[6];
  ASSERT_EQ(plan.workload.mask.kind, MaskKind::kDocuments);
  const std::string text = PlanToToml(plan);
  EXPECT_NE(text.find("mask = \"docs\""), std::string::npos);
  EXPECT_NE(text.find("document_lengths = ["), std::string::npos);
  EXPECT_NE(text.find("16384"), std::string::npos);
}

TEST(PlanIoTest, PrefixAndBidirectionalDocumentMasksRoundTrip) {
  Plan plan = ExamplePlans()[6];
  const int64_t seq = plan.workload.seq_len;
  plan.workload.mask = Mask::Prefix(seq / 4 + 3);  // not a multiple of a K: written exactly
  std::string text = PlanToToml(plan);
  EXPECT_NE(text.find("mask = \"prefix:" + std::to_string(seq / 4 + 3) + "\""), std::string::npos)
      << text;
  auto back = ParsePlanToml(text, "p.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSamePlan(plan, *back);

  plan.workload.mask = Mask::Documents({seq / 2, seq / 2}, true);
  text = PlanToToml(plan);
  EXPECT_NE(text.find("mask = \"docs-full\""), std::string::npos) << text;
  back = ParsePlanToml(text, "p.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSamePlan(plan, *back);
}

TEST(PlanIoTest, SampledDocumentsAreStoredAsTheLengthsDrawn) {
  Plan plan = ExamplePlans()[6];
  auto mask = ParseMask("docs-sampled:uniform:min=1K:max=4K:seed=3");
  ASSERT_TRUE(mask.ok());
  plan.workload.mask = *mask;
  ASSERT_TRUE(DrawDocuments(&plan.workload.mask, plan.workload.seq_len).ok());
  const std::string text = PlanToToml(plan);
  EXPECT_NE(text.find("documents_source = \"sampled uniform:min=1K:max=4K:seed=3\""),
            std::string::npos)
      << text;
  auto back = ParsePlanToml(text, "p.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  // The file holds lengths, not a distribution: read back, nothing is drawn again.
  EXPECT_FALSE(back->workload.mask.sampler.has_value());
  EXPECT_EQ(back->workload.mask.kind, MaskKind::kDocuments);
  EXPECT_EQ(back->workload.mask.document_lengths, plan.workload.mask.document_lengths);
  // A sampled mask string in a plan is refused: a plan never depends on a draw.
  std::string sampled = text;
  sampled.replace(sampled.find("mask = \"docs\""), 13,
                  "mask = \"docs-sampled:uniform:min=1:max=2\"");
  auto refused = ParsePlanToml(sampled, "p.toml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("workload.mask"), std::string::npos)
      << refused.status().message();
}

TEST(PlanIoTest, EstimateIsAppendedVerbatimAndIgnored) {
  const Plan plan = ExamplePlans()[0];
  const std::string body = "time_s = 1.25\nnotes = \"anything\"\n[estimate.bytes]\nnvlink = 123\n";
  const std::string text = PlanToToml(plan, body);
  EXPECT_NE(text.find("\n[estimate]\n" + body), std::string::npos) << text;
  auto back = ParsePlanToml(text, "p.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSamePlan(plan, *back);
  // With its own header the text is not given a second one.
  const std::string with_header = PlanToToml(plan, "[estimate]\ntime_s = 2");
  EXPECT_EQ(with_header.find("[estimate]"), with_header.rfind("[estimate]"));
  EXPECT_TRUE(ParsePlanToml(with_header, "p.toml").ok());
}

const char kMinimal[] = R"(schema_version = 1
[workload]
seq = 65536
heads = 32
kv_heads = 8
head_dim = 128
[topology]
name = "x"
gpus = 16
[scheme]
name = "mesh"
tile_a = 4
tile_b = 4
)";

TEST(PlanIoTest, MinimalPlanTakesDocumentedDefaults) {
  auto plan = ParsePlanToml(kMinimal, "p.toml");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->workload.batch, 1);
  EXPECT_EQ(plan->workload.dtype, DType::kBf16);
  EXPECT_EQ(plan->workload.partial_dtype, DType::kFp32);
  EXPECT_EQ(plan->workload.mask.kind, MaskKind::kCausal);
  EXPECT_EQ(plan->workload.pass, Pass::kForwardBackward);
  EXPECT_EQ(plan->topology_source, "");
  EXPECT_EQ(plan->params.layout, Layout::kZigzag);
  EXPECT_FALSE(plan->params.cache_forward);
  EXPECT_EQ(plan->params.reduce_chain, ReduceChain::kOwnerLast);
  EXPECT_EQ(plan->params.placement, (std::vector<std::string>{"q", "kv"}));
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void ExpectError(const std::string& text, std::vector<std::string> parts) {
  auto plan = ParsePlanToml(text, "p.toml");
  ASSERT_FALSE(plan.ok()) << text;
  const std::string& m = plan.status().message();
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput) << m;
  EXPECT_EQ(m.rfind("p.toml", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  for (const std::string& part : parts)
    EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' not in: " << m;
}

TEST(PlanIoTest, UnknownKeys) {
  ExpectError(Replace(kMinimal, "[workload]", "extra = 1\n[workload]"), {"unknown key 'extra'"});
  ExpectError(Replace(kMinimal, "seq = 65536", "seq = 65536\nseqlen = 4"),
              {"unknown key 'workload.seqlen'"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\ntile_c = 4"),
              {"unknown key 'scheme.tile_c'"});
  ExpectError(Replace(kMinimal, "gpus = 16", "gpus = 16\nnodes = 2"),
              {"unknown key 'topology.nodes'"});
}

TEST(PlanIoTest, SchemaVersion) {
  ExpectError(Replace(kMinimal, "schema_version = 1", "schema_version = 2"),
              {"schema_version: unsupported plan schema version 2", "reads version 1"});
  ExpectError(Replace(kMinimal, "schema_version = 1\n", ""),
              {"schema_version: missing required key"});
  ExpectError(Replace(kMinimal, "schema_version = 1", "schema_version = \"1\""),
              {"schema_version: expected an integer, got string"});
}

TEST(PlanIoTest, BadNames) {
  ExpectError(Replace(kMinimal, "name = \"mesh\"", "name = \"meshy\""),
              {"scheme.name: unknown scheme 'meshy'"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\nlayout = \"spiral\""),
              {"scheme.layout:", "spiral"});
  ExpectError(Replace(kMinimal, "head_dim = 128", "head_dim = 128\ndtype = \"int8\""),
              {"workload.dtype:", "int8"});
  ExpectError(Replace(kMinimal, "head_dim = 128", "head_dim = 128\npass = \"both\""),
              {"workload.pass:", "both"});
  ExpectError(Replace(kMinimal, "head_dim = 128", "head_dim = 128\nmask = \"window:0\""),
              {"workload.mask:"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\nreduce_chain = \"middle\""),
              {"scheme.reduce_chain:"});
}

TEST(PlanIoTest, BadPlacement) {
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\nplacement = [\"q\", \"q\"]"),
              {"scheme.placement:", "[q, kv]"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\nplacement = [\"q\"]"),
              {"scheme.placement:"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\nplacement = [\"q\", 3]"),
              {"scheme.placement[1]: expected a string"});
}

TEST(PlanIoTest, BadValues) {
  // 12 query heads cannot be grouped over 8 KV heads.
  ExpectError(Replace(kMinimal, "heads = 32", "heads = 12"), {"workload:", "multiple of kv-heads"});
  ExpectError(Replace(kMinimal, "seq = 65536", "seq = 0"), {"workload:", "seq must be positive"});
  ExpectError(Replace(kMinimal, "tile_a = 4", "tile_a = 0"), {"scheme.tile_a: must be at least 1"});
  ExpectError(Replace(kMinimal, "gpus = 16", "gpus = 32"),
              {"topology.gpus:", "16 ranks", "32 GPUs"});
  ExpectError(Replace(kMinimal, "seq = 65536", "seq = 65536.0"),
              {"workload.seq: expected an integer, got float"});
  ExpectError(Replace(kMinimal, "tile_b = 4", "tile_b = 4\ncache_forward = 1"),
              {"scheme.cache_forward: expected a boolean"});
  // Head-parallel degree must divide the heads: 32 heads over ulysses 3.
  std::string ulysses = Replace(Replace(kMinimal, "name = \"mesh\"", "name = \"ulysses\""),
                                "tile_a = 4\ntile_b = 4", "ulysses = 3");
  ExpectError(Replace(ulysses, "gpus = 16", "gpus = 3"), {"scheme.ulysses:", "divisible"});
  std::string loong = Replace(Replace(kMinimal, "name = \"mesh\"", "name = \"loongtrain\""),
                              "tile_a = 4\ntile_b = 4", "ulysses = 2\nring = 8\nwindow = 3");
  ExpectError(loong, {"scheme.window:", "divide"});
}

TEST(PlanIoTest, DocumentsErrors) {
  const std::string docs = Replace(kMinimal, "head_dim = 128", "head_dim = 128\nmask = \"docs\"");
  ExpectError(docs, {"workload.document_lengths: missing required key"});
  ExpectError(
      Replace(docs, "mask = \"docs\"", "mask = \"docs\"\ndocument_lengths = [32768, 0, 32768]"),
      {"workload.document_lengths[1]: must be positive"});
  ExpectError(Replace(docs, "mask = \"docs\"", "mask = \"docs\"\ndocument_lengths = [32768, 1000]"),
              {"workload:", "sum to 33768"});
  ExpectError(Replace(kMinimal, "head_dim = 128", "head_dim = 128\ndocument_lengths = [65536]"),
              {"workload.document_lengths: only allowed with mask = \"docs\""});
  ExpectError(Replace(kMinimal, "head_dim = 128", "head_dim = 128\nmask = \"docs:lengths.txt\""),
              {"workload.mask:", "inline"});
  auto ok = ParsePlanToml(
      Replace(docs, "mask = \"docs\"", "mask = \"docs\"\ndocument_lengths = [32768, 32768]"),
      "p.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->workload.mask.document_lengths, (std::vector<int64_t>{32768, 32768}));
}

TEST(PlanIoTest, SyntaxErrorGivesLine) {
  ExpectError(Replace(kMinimal, "gpus = 16", "gpus = 16 16"), {"p.toml:9:"});
}

TEST(PlanIoTest, FilesLoadAndMissingFileIsNotFound) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("meshplan_plan_" + std::to_string(::getpid()) + ".toml"))
                               .string();
  const Plan plan = ExamplePlans()[7];
  ASSERT_TRUE(WriteFileAtomically(path, PlanToToml(plan, "time_s = 3")).ok());
  auto loaded = LoadPlanFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ExpectSamePlan(plan, *loaded);

  auto missing = LoadPlanFile(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().message(), path + ".missing: cannot open file");
}

TEST(PlanIoTest, DegreesWhoseProductOverflowsAreRefused) {
  // Issue 17 (UBSan, int64 overflow in the rank count): 2^32 x 2^32 = 2^64 wraps to 0.
  ExpectError(Replace(Replace(kMinimal, "tile_a = 4", "tile_a = 4294967296"), "tile_b = 4",
                      "tile_b = 4294967296"),
              {"scheme: the mesh scheme's degrees multiply to more than the 10 million GPUs a "
               "topology may have"});
  ExpectError(Replace(kMinimal, "gpus = 16", "gpus = 1099511627776"),
              {"topology.gpus: must be at most 10000000"});
}

TEST(PlanIoTest, DocumentLengthsWhoseSumWrapsToSeqAreRefused) {
  // 4 x 2^62 + 65536 = 2^64 + 65536 wraps around to the plan's seq of 65536.
  const std::string docs =
      Replace(kMinimal, "head_dim = 128",
              "head_dim = 128\nmask = \"docs\"\ndocument_lengths = [4611686018427387904, "
              "4611686018427387904, 4611686018427387904, 4611686018427387904, 65536]");
  ExpectError(docs, {"workload:", "sum to more than 2^63 - 1 tokens, but the sequence has 65536"});
}

}  // namespace
}  // namespace meshplan::planner
