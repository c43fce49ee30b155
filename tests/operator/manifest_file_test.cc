// LoadManifest and DocumentProblems: the manifest loading `validate` and `render` share.
#include "operator/api/manifest_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace ddp::api {
namespace {

// A temporary manifest file, removed at the end of the test.
class TempManifest {
 public:
  explicit TempManifest(const std::string& text) {
    char tmpl[] = "/tmp/ddp-manifest-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~TempManifest() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char kValid[] =
    "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: ok, namespace: ml}\n"
    "spec:\n  replicas: 2\n  template:\n    spec:\n      containers: [{name: worker, image: x}]\n";

TEST(LoadManifest, ReadsParsesAndDefaultsEveryDocument) {
  TempManifest f(std::string(kValid) + "---\napiVersion: v1\nkind: ConfigMap\n"
                 "metadata: {name: c}\n");
  auto docs = LoadManifest("validate", f.path());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].label, "document 1 (ml/ok)");  // namespace/name, as kubectl names it
  EXPECT_EQ((*docs)[0].job.spec.replicas, 2);
  EXPECT_EQ((*docs)[0].job.spec.rendezvous.port, 29500) << "defaulted";
  EXPECT_TRUE(DocumentProblems((*docs)[0]).empty());
  EXPECT_EQ((*docs)[1].other_kind, "ConfigMap");
}

// `kubectl get ddpj -A -o yaml` and the API's own DDPJobList: each item is a document of its own,
// labelled with the List's position and the item's; other kinds among them are skipped as usual,
// and a kind that only looks like a DDPJob is an error.
TEST(ParseManifestDocuments, ListsAreReadItemByItem) {
  const std::string item = "- apiVersion: ddp.dev/v1alpha1\n  kind: DDPJob\n  metadata: {name: a, namespace: ml}\n"
                           "  spec: {replicas: 1, template: {spec: {containers: [{name: worker, image: x}]}}}\n";
  for (const char* kind : {"List", "DDPJobList"}) {
    auto docs = ParseManifestDocuments(std::string("apiVersion: v1\nkind: ") + kind + "\nitems:\n" +
                                       item + "- {apiVersion: v1, kind: Service, metadata: {name: s}}\n" +
                                       "- {apiVersion: ddp.dev/v1alpha1, kind: DdpJob, metadata: {name: b}}\n");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    ASSERT_EQ(docs->size(), 3u) << kind;
    EXPECT_EQ((*docs)[0].label, "document 1, item 1 (ml/a)");
    EXPECT_TRUE(DocumentProblems((*docs)[0]).empty());
    EXPECT_EQ((*docs)[0].job.spec.replicas, 1);
    EXPECT_EQ((*docs)[1].other_kind, "Service");
    EXPECT_EQ((*docs)[2].label, "document 1, item 3 (b)");
    EXPECT_TRUE((*docs)[2].other_kind.empty());
    EXPECT_NE((*docs)[2].parse_status.message().find("did you mean DDPJob?"), std::string::npos);
  }
}

TEST(LoadManifest, ErrorsAreWholeLinesNamingTheCommandOrTheFile) {
  auto missing = LoadManifest("render", "/nonexistent/job.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "render: cannot open /nonexistent/job.yaml");
  TempManifest bad("kind: [unclosed\n");
  auto syntax = LoadManifest("validate", bad.path());
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().message().rfind(bad.path() + ": ", 0), 0u)
      << syntax.status().message();
}

TEST(DocumentProblems, ParseErrorElseEveryValidationProblem) {
  TempManifest f(
      "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: a}\n"
      "spec: {replicas: two}\n---\n"
      "apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: b}\n"
      "spec: {replicas: 2, nprocPerNode: 0}\n");
  auto docs = LoadManifest("validate", f.path());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  const auto parse = DocumentProblems((*docs)[0]);
  ASSERT_EQ(parse.size(), 1u);
  EXPECT_NE(parse[0].find("spec.replicas"), std::string::npos) << parse[0];
  const auto invalid = DocumentProblems((*docs)[1]);
  ASSERT_GE(invalid.size(), 2u) << "nprocPerNode and the missing template";
  bool nproc = false;
  for (const auto& p : invalid) nproc |= p.find("spec.nprocPerNode") != std::string::npos;
  EXPECT_TRUE(nproc);
}

}  // namespace
}  // namespace ddp::api
