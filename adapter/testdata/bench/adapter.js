// A courier that pushes every scan of a waybill; codes are its own.
const STATUS = {
  10: "info_received", 20: "picked_up", 30: "in_transit", 40: "in_transit",
  50: "out_for_delivery", 60: "delivered", 70: "failed_attempt",
  80: "exception", 90: "returned",
};

function transform(callback) {
  const b = callback.body;
  if (b.msg_type !== "TRACK_PUSH") {
    return null; // heartbeats and order messages make no event
  }
  const r = b.route;
  const status = STATUS[r.op_code];
  if (status === undefined) {
    return null; // internal scans (sorting, weighing) are not tracking events
  }
  const site = r.site || {};
  return {
    type: "tracking.updated",
    ordering_key: b.waybill.no,
    merchant: b.partner.code,
    occurred_at: hookrelay.localTime(r.op_time, r.tz || "Asia/Shanghai"),
    data: {
      tracking_number: b.waybill.no,
      carrier: callback.carrier,
      status: status,
      status_text: r.op_name,
      occurred_at: hookrelay.localTime(r.op_time, r.tz || "Asia/Shanghai"),
      location: {city: site.city, province: site.province, country: site.country},
      courier: r.courier ? {name: r.courier.name, phone: r.courier.phone} : undefined,
    },
  };
}
