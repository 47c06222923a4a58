// The acceptance scenario of issue 33, run by a released client (@xmtp/browser-sdk 7.1.0) in a page:
// window.xmtpTest(apiUrl) returns a JSON report of what each client saw; the Python test checks
// it and reads the same rows through xmtp.backend.v1. Waits are bounded; a failed step throws.
import { Client, createEOASigner } from "@xmtp/browser-sdk";
import { generatePrivateKey } from "viem/accounts";

const step = (name) => console.log("STEP " + name);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, predicate, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await sleep(100);
  }
  throw new Error("timed out waiting for " + what);
}

const texts = (messages) => messages.map((m) => m.content).filter((c) => typeof c === "string");

async function streamTexts(conversation) {
  const got = [];
  const stream = await conversation.stream({
    onValue: (m) => typeof m.content === "string" && got.push(m.content),
  });
  return { got, stream };
}

async function groupOf(client, id) {
  await client.conversations.sync();
  const group = await client.conversations.getConversationById(id);
  if (!group) throw new Error("the group is not found by " + client.inboxId);
  await group.sync();
  return group;
}

const installationIds = (state) => state.installations.map((i) => i.id).sort();

window.xmtpTest = async (apiUrl, run) => {
  const options = (name) => ({ env: "local", apiUrl, dbPath: `xmtp-${run}-${name}.db3` });
  const keyA = generatePrivateKey();
  step("create A and B");
  const a = await Client.create(createEOASigner(keyA), options("a"));
  const b = await Client.create(createEOASigner(generatePrivateKey()), options("b"));
  const canMessage = [...(await a.canMessage([b.accountIdentifier])).values()];

  step("A creates a group with B and sends");
  const group = await a.conversations.createGroup([b.inboxId]);
  await group.sendText("one");
  const bGroup = await groupOf(b, group.id);
  const bSynced = texts(await bGroup.messages());

  step("B streams, A sends; A streams, B replies");
  const bStream = await streamTexts(bGroup);
  const aStream = await streamTexts(group);
  await sleep(500);
  await group.sendText("two");
  await waitFor("B's stream to deliver 'two'", () => bStream.got.includes("two"));
  await bGroup.sendText("reply");
  await waitFor("A's stream to deliver 'reply'", () => aStream.got.includes("reply"));

  // Cross-view, v1 -> V3: while the driver holds A's sends back, the test publishes them through
  // xmtp.backend.v1 Publish; B's V3 stream must deliver what only that path stored.
  step("A's next send goes through xmtp.backend.v1");
  console.log("XB_CAPTURE_BEGIN");
  await group.sendText("via-v1");
  await waitFor("B's stream to deliver 'via-v1'", () => bStream.got.includes("via-v1"), 60000);
  console.log("XB_CAPTURE_END");

  step("a third member joins later");
  const c = await Client.create(createEOASigner(generatePrivateKey()), options("c"));
  await group.addMembers([c.inboxId]);
  await group.sendText("three");
  const cGroup = await groupOf(c, group.id);
  const cSynced = texts(await cGroup.messages());
  await waitFor("B's stream to deliver 'three'", () => bStream.got.includes("three"));

  step("A opens a second installation and revokes it");
  const a2 = await Client.create(createEOASigner(keyA), options("a2"));
  const beforeRevoke = installationIds(await a.preferences.fetchInboxState());
  await a.revokeInstallations([a2.installationIdBytes]);
  const seenByA = installationIds(await a.preferences.fetchInboxState());
  const seenByB = installationIds((await b.preferences.getInboxStates([a.inboxId], true))[0]);

  await bStream.stream.end();
  await aStream.stream.end();
  return JSON.stringify({
    canMessage, groupId: group.id, bSynced, bStreamed: bStream.got, aStreamed: aStream.got,
    cSynced, installationA: a.installationId, installationA2: a2.installationId,
    beforeRevoke, seenByA, seenByB,
  });
};
