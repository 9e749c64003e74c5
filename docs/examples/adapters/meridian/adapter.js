// Meridian Logistics: a delivery callback that carries the signed waybill
// as a base64 image (tens of KB). The image stays in the original callback
// (GET /v1/messages/{id}); the event only says there is one.
const STATUS = {
  CRT: "info_received", PUP: "picked_up", ITR: "in_transit", OFD: "out_for_delivery",
  DLV: "delivered", ATT: "failed_attempt", EXC: "exception", RTS: "returned",
};

function transform(callback) {
  const b = callback.body;
  const status = STATUS[b.status.code];
  if (status === undefined) {
    return null; // Meridian's internal codes (weighing, relabelling)
  }
  // Local time with the hub's offset: "2026-12-04 15:40:12", "+07:00".
  const at = hookrelay.localTime(b.status.local_time, b.status.utc_offset);
  const pod = b.proof_of_delivery;
  const data = {
    tracking_number: b.consignment_no,
    carrier: callback.carrier,
    status: status,
    status_text: b.status.text,
    occurred_at: at,
    location: {city: b.status.hub.city, country: b.status.hub.country},
    waybill_image: Boolean(pod && pod.waybill_image_base64),
  };
  if (pod && pod.received_by) {
    data.status_text += " (" + pod.received_by + ")";
  }
  return {
    type: "tracking.updated",
    ordering_key: b.consignment_no,
    merchant: b.shipper_ref.split("/")[0],
    occurred_at: at,
    data: data,
  };
}
