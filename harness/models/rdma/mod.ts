/**
 * The RDMA wire oracle: codecs for every header a RoCEv2 or native
 * InfiniBand frame carries, the ICRC and VCRC, the opcode table, MADs, frame
 * builders, a synthetic RC conversation generator, the wire fuzz generator,
 * and the conformance checker every end-to-end capture is run through. Pure
 * functions over bytes: no I/O (reading a pcapng file is
 * `harness/oracle/wire_check.ts`'s job).
 *
 * Written from the IBA specification volume 1, the RoCEv2 annex (A17) and
 * docs/wire.md, independently of the C it checks.
 *
 * @example
 * ```ts
 * import { checkCapture, RcConversation } from "./harness/models/rdma/mod.ts";
 * const conv = new RcConversation({ pmtu: 1024 }).send("a", 3000).read("b", 5000);
 * const result = checkCapture(conv.frames);
 * console.log(result.framesChecked, result.violations); // 9, []
 * ```
 *
 * @module
 */

/** Big-endian field access and hex helpers. */
export { bytesToHex, hexToBytes, rd16, rd24, rd32, rd64, wr16, wr24, wr32, wr64 } from "./bytes.ts";
/** Typed errors of the header codecs. */
export { FieldRangeError, RdmaCodecError, TruncatedError } from "./errors.ts";
/** CRC-32 (ICRC algorithm) and CRC-16/0x100B (VCRC algorithm). */
export {
  CRC16_VCRC_INIT,
  crc16Vcrc,
  crc16VcrcUpdate,
  crc32,
  CRC32_INIT,
  crc32Update,
} from "./crc.ts";
/** Ethernet II with VLAN tags. */
export {
  decodeEthernet,
  encodeEthernet,
  type EthernetHeader,
  ethernetLength,
  ETHERTYPE_ARP,
  ETHERTYPE_IPV4,
  ETHERTYPE_IPV6,
  macToString,
  parseMac,
  TPID_8021AD,
  TPID_8021Q,
  type VlanTag,
} from "./ethernet.ts";
/** IPv4 (with header checksum) and IPv6. */
export {
  decodeIpv4,
  decodeIpv6,
  encodeIpv4,
  encodeIpv6,
  IPPROTO_TCP,
  IPPROTO_UDP,
  ipv4ChecksumValid,
  type Ipv4Header,
  ipv4HeaderChecksum,
  ipv4ToString,
  IPV6_BYTES,
  type Ipv6Header,
  ipv6ToString,
  onesComplementSum,
  parseIpv4,
} from "./ip.ts";
/** UDP. */
export {
  decodeUdp,
  encodeUdp,
  ROCEV2_UDP_PORT,
  UDP_BYTES,
  udpChecksumIpv4,
  type UdpHeader,
} from "./udp.ts";
/** LRH and GRH. */
export {
  decodeGrh,
  decodeLrh,
  encodeGrh,
  encodeLrh,
  type Grh,
  GRH_BYTES,
  GRH_NEXT_HEADER_BTH,
  LNH_IBA_GLOBAL,
  LNH_IBA_LOCAL,
  LNH_IP_NON_IBA,
  LNH_RAW,
  type Lrh,
  LRH_BYTES,
} from "./route.ts";
/** BTH and the extended transport headers; PSN arithmetic. */
export {
  ackSyndrome,
  type Aeth,
  AETH_BYTES,
  type AethKind,
  aethKind,
  ATOMIC_ACK_ETH_BYTES,
  ATOMIC_ETH_BYTES,
  type AtomicAckEth,
  type AtomicEth,
  type Bth,
  BTH_BYTES,
  decodeAeth,
  decodeAtomicAckEth,
  decodeAtomicEth,
  decodeBth,
  decodeDeth,
  decodeIeth,
  decodeImmDt,
  decodeReth,
  type Deth,
  DETH_BYTES,
  encodeAeth,
  encodeAtomicAckEth,
  encodeAtomicEth,
  encodeBth,
  encodeDeth,
  encodeIeth,
  encodeImmDt,
  encodeReth,
  ICRC_BYTES,
  IETH_BYTES,
  IMMDT_BYTES,
  NAK_CODES,
  nakSyndrome,
  PSN_MASK,
  psnAdd,
  psnDiff,
  type Reth,
  RETH_BYTES,
  rnrNakSyndrome,
  VCRC_BYTES,
} from "./transport.ts";
/** The opcode table. */
export {
  CNP_OPCODE,
  EXT_HEADER_BYTES,
  type ExtHeader,
  OP,
  type OpcodeInfo,
  opcodeInfo,
  OPCODES,
  type Operation,
  type Position,
  type Transport,
  TRANSPORT_BASE,
} from "./opcodes.ts";
/** ICRC and VCRC of whole packets. */
export { ibIcrc, ibVcrc, readIcrc, readVcrc, roceIcrc, writeIcrc, writeVcrc } from "./icrc.ts";
/** MADs, SMPs and the subnet management attributes. */
export {
  decodeGuidInfo,
  decodeMad,
  decodeMadHeader,
  decodeNodeInfo,
  decodePKeyTable,
  decodePortInfo,
  decodeSmp,
  drDirection,
  drHeaderFields,
  drHopCount,
  drHopPointer,
  encodeGuidInfo,
  encodeMad,
  encodeMadHeader,
  encodeNodeInfo,
  encodePKeyTable,
  encodePortInfo,
  encodeSmp,
  GSI_QKEY,
  GUID_BLOCK_ENTRIES,
  isDirectedRoute,
  type Mad,
  MAD_BYTES,
  MAD_HEADER_BYTES,
  MAD_METHOD,
  type MadHeader,
  MGMT_CLASS,
  NODE_INFO_BYTES,
  type NodeInfo,
  PKEY_BLOCK_ENTRIES,
  PORT_INFO_BYTES,
  PORT_INFO_LAYOUT,
  PORT_STATE,
  type PortInfo,
  type Smp,
  SMP_ATTR,
  SMP_DATA_BYTES,
} from "./mad.ts";
/** SA and PMA MADs: the SA header, PathRecord, MCMemberRecord, SMInfo. */
export {
  decodeMcMemberRecord,
  decodePathRecord,
  decodeSaMad,
  decodeSmInfo,
  encodeMcMemberRecord,
  encodePathRecord,
  encodeSaMad,
  MC_MEMBER_RECORD_BYTES,
  MCM_COMP,
  type McMemberRecord,
  PATH_COMP,
  PATH_RECORD_BYTES,
  type PathRecord,
  PMA_ATTR,
  PMA_DATA_OFFSET,
  SA_ATTR,
  SA_DATA_BYTES,
  SA_DATA_OFFSET,
  SA_STATUS,
  type SaMad,
  type SmInfo,
} from "./sa.ts";
/** MAD pairing and management semantics. */
export { MadChecker, madStatusProblems } from "./check_mad.ts";
export {
  CNP_RESERVED_BYTES,
  CnpChecker,
  type CnpCheckOptions,
  ECN_CE,
  type EcnCensus,
  ecnOf,
} from "./check_cnp.ts";
/** PFC (802.1Qbb MAC Control) frames: decoding, the `pfc` rule and its census. */
export {
  checkMacControl,
  decodePfc,
  emptyPfcCensus,
  ETHERTYPE_MAC_CONTROL,
  MAC_CONTROL_DST,
  OPCODE_PFC,
  PFC_FRAME_LEN,
  type PfcCensus,
  type PfcFrame,
} from "./check_pfc.ts";
/** Multicast addressing: the multicast QP, multicast IPs, GIDs and LIDs, and their group MACs. */
export {
  ipv4MulticastMac,
  ipv6MulticastMac,
  isGroupMac,
  isIpv4Multicast,
  isIpv6Multicast,
  isMulticastLid,
  MULTICAST_LID_MIN,
  MULTICAST_QPN,
  PERMISSIVE_LID,
} from "./multicast.ts";
/** Whole-frame decoding. */
export {
  type CaptureFrame,
  decodeFrame,
  type DecodeOptions,
  ipOffset,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  type Packet,
  type PacketKind,
  packetPayload,
} from "./frame.ts";
/** Whole-frame building. */
export {
  buildIbFrame,
  buildRoceFrame,
  type IbFrameSpec,
  refreshCrcs,
  refreshIpv4Checksum,
  type RoceFrameSpec,
  type TransportSpec,
} from "./build.ts";
/** Synthetic RC conversations. */
export {
  type MessageOptions,
  RcConversation,
  type RcConversationOptions,
  type RcEndpoint,
  type Side,
} from "./conversation.ts";
/** The conformance checker. */
export {
  CaptureChecker,
  checkCapture,
  type CheckOptions,
  type CheckResult,
  type RuleId,
  type Violation,
} from "./checker.ts";
/** The wire fuzz: seeded frames aimed at live QPs, each with its predicted receive counter. */
export {
  CLASS_COUNTER,
  FATAL,
  type FuzzFrame,
  MUTATIONS,
  victimWindow,
  type WireClass,
  WireFuzz,
  type WireTarget,
} from "./wire_fuzz.ts";
