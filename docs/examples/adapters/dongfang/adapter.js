// Dongfang Kuaidi (东方快递): a form post whose logistics_interface field
// is JSON with every trace so far; times are China time, "2026/12/04 08:15";
// the status is Chinese text.
const STATUS = {
  "已下单": "info_received",
  "已揽收": "picked_up",
  "运输中": "in_transit",
  "到件": "in_transit",
  "发件": "in_transit",
  "派件中": "out_for_delivery",
  "已签收": "delivered",
  "派件失败": "failed_attempt",
  "问题件": "exception",
  "已退回": "returned",
};

function transform(callback) {
  const form = hookrelay.parseForm(callback.raw);
  if (form.msg_type !== "TRACKPUSH") {
    return null; // order confirmations and pings make no event
  }
  const push = JSON.parse(form.logistics_interface);
  // The latest trace is the event; "2026/12/04 08:15" sorts as text.
  const last = push.traces.reduce((a, b) => (b.time > a.time ? b : a));
  const status = STATUS[last.action];
  if (status === undefined) {
    throw new Error("unknown Dongfang action " + last.action);
  }
  const at = hookrelay.localTime(last.time, "Asia/Shanghai");
  // "快递员王师傅正在派件，电话13800138000": the courier's name and phone.
  const courier = /快递员(.+?)正在派件，电话(\d{11})/.exec(last.desc);
  return {
    type: "tracking.updated",
    ordering_key: push.mailNo,
    merchant: push.customerCode,
    occurred_at: at,
    data: {
      tracking_number: push.mailNo,
      carrier: callback.carrier,
      status: status,
      status_text: last.desc,
      occurred_at: at,
      location: {city: last.city, province: last.province, country: "CN"},
      courier: courier ? {name: courier[1], phone: courier[2]} : undefined,
    },
  };
}
